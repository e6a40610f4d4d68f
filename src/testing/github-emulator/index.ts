// Placeholder barrel: filled in by the module that owns this folder.
export {};
