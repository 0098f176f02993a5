"""Network access at the edges of the app (outbound HTTP)."""
