"""The files themselves: formats, atomic writes, dates, redaction, input bounds, scopes."""
