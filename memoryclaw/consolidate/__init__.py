"""Raw logs become episodes, facts and skills."""
