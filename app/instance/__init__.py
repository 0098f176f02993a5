"""Instance-wide settings and profile."""
