"""One module per area of the console; each has ``routes(app)`` registering its pages."""
