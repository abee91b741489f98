"""The derived SQLite index: schema, scan of the vault, queries, vectors."""
