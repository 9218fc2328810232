"""The app's routers, one per concern; :func:`..app.create_app` includes them."""
