"""Lightning callbacks that gather predictions across ranks and call the (plain-function) metrics."""
