"""Thin Litestar controllers: decode, run one agent step, encode."""
