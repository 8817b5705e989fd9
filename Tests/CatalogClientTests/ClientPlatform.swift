import CatalogClient

/// The client's `Platform`, by a name that files importing CatalogKit (which has a `Platform` of
/// its own) can use; the module cannot qualify it, since the actor `CatalogClient` shadows its name.
typealias ClientPlatform = Platform
