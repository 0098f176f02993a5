"""Share links: one memo, anonymously, while unexpired and not revoked."""
