"""Test support: starting the real service in a subprocess, free ports."""
