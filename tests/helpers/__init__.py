"""Builders shared by more than one test area (plain modules, importable where a conftest is not)."""
