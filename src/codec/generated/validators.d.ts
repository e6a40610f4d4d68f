/** A validator compiled by ajv at build time: `true`, or `false` with `errors` set. */
export interface PrecompiledValidator {
  (data: unknown): boolean;
  errors?: import('ajv').ErrorObject[] | null;
}
/** schemaKey(schema) → validator; see scripts/generate-validators.ts. */
export declare const precompiledValidators: Readonly<Record<string, PrecompiledValidator>>;
