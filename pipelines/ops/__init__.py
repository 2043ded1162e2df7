"""Operator commands: status, maintenance, the demo."""
