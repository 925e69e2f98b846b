"""The JSON API's request and response bodies, and the bounds every client input is checked against."""
