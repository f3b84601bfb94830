"""The service version reported by `/ready` and the OpenAPI document."""

VERSION = "0.1.0"
