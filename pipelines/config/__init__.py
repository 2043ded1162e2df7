"""Configuration: the frozen model, the YAML + environment loader, units."""
