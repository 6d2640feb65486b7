@_exported import MediaCore
