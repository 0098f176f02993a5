"""Users: sign-up, profiles, roles and the per-user stats."""
