"""Stage: deployed selectors scored against ES_pool, per query and cache-faithful."""
