"""Attachments: uploaded files, bound to a memo and then readable exactly as the memo is."""
