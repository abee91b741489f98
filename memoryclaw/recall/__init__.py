"""From a query to the payload: plan, rank, recency, working memory, metrics."""
