"""Git history, sync with remotes, team vaults, export and import, forgetting."""
