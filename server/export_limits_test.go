package server

// IsWebsocketRoute exposes the limits' list of websocket routes to the
// external tests, which find every route that upgrades.
func IsWebsocketRoute(route string) bool { return websocketRoutes[route] }
