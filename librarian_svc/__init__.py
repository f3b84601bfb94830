"""The HTTP service: Litestar app factory, controllers, settings, logging, error mapping, state signing."""
