/** schemaKey(schema) → its generated module, loaded on demand; see scripts/generate-validators.ts. */
export declare const validatorLoaders: Readonly<Record<string, () => Promise<typeof import('./run-index.js')>>>;
