/** A value JSON can carry without loss. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/*
 * The part of validation the core entry needs: turning a validator compiled at build time
 * (src/codec/generated/<schema>.js) into issues, and throwing on them. It loads neither ajv
 * nor zod; compiling a schema at run time is `compileValidator` (validate.ts), which does.
 */

/** A JSON Schema (draft 2020-12) object. */
export type JsonSchema = { readonly [key: string]: unknown };
