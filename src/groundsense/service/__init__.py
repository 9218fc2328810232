"""The HTTP service: the JSON API and the review page, over one loaded scorer."""
