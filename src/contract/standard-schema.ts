import { CheckpointError } from './errors.js';

/**
 * The Standard Schema interface (https://standardschema.dev, v1), copied as its authors
 * intend so savepoint takes a payload schema from any library that implements it — zod
 * 3.24+ and 4, valibot, arktype — without depending on any of them.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema properties. */
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

// eslint-disable-next-line @typescript-eslint/no-namespace -- the spec's own shape, kept so its types can be named as published
export declare namespace StandardSchemaV1 {
  /** The Standard Schema properties interface. */
  export interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }
  /** The result of `validate`. */
  export type Result<Output> = SuccessResult<Output> | FailureResult;
  export interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }
  export interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }
  export interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }
  export interface PathSegment {
    readonly key: PropertyKey;
  }
  export interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }
  export type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['input'];
  export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['output'];
}

/** True when `value` carries a Standard Schema v1 `~standard` property. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const props = (value as { '~standard'?: { version?: unknown; validate?: unknown } })['~standard'];
  return typeof props === 'object' && props !== null && props.version === 1 && typeof props.validate === 'function';
}

/** A schema that accepts every value as `T` (the JSON check happens when the payload is encoded). */
export function anySchema<T>(): StandardSchemaV1<T, T> {
  return { '~standard': { version: 1, vendor: 'savepoint', validate: (value) => ({ value: value as T }) } };
}

/**
 * Runs a Standard Schema's `validate` and answers synchronously. A schema that answers with
 * a promise (an async refinement) cannot check a checkpoint, which is validated at call time,
 * so it is `checkpoint_config_invalid`.
 */
export function validateSync<Output>(schema: StandardSchemaV1<unknown, Output>, value: unknown): StandardSchemaV1.Result<Output> {
  if (!isStandardSchema(schema))
    throw new CheckpointError(
      'checkpoint_config_invalid',
      'validateSync: schema must be a Standard Schema (zod 3.24+ or 4, valibot, arktype, …)',
    );
  const result = schema['~standard'].validate(value);
  if (result instanceof Promise) {
    result.catch(() => undefined); // nobody awaits it: keep a rejection from surfacing as unhandled
    throw new CheckpointError('checkpoint_config_invalid', 'payload schema validates asynchronously; savepoint needs a synchronous schema');
  }
  return result;
}

/** The key of one path segment of a Standard Schema issue. */
export function issueKey(segment: PropertyKey | StandardSchemaV1.PathSegment): PropertyKey {
  return typeof segment === 'object' && segment !== null ? segment.key : segment;
}
