import type { JsonObject } from './json.js';

/** A reference to one part file. */
export interface PartRef {
  readonly key: string;
  readonly sha256: string;
  readonly bytes: number;
}

/** A part file to write before the main document. */
export interface PartFile extends PartRef {
  readonly data: Uint8Array;
}

/** Result of {@link splitDocument}. */
/** Options of {@link splitDocument} and of a profile's `splitDocument` hook. */
export interface SplitOptions {
  /**
   * The caller owns `document` and will not use it again: the splitter may change it in place
   * (moved values replaced by their references) instead of copying it first. The writer passes
   * its private parse of the document. @default false
   */
  readonly owned?: boolean;
}

export interface SplitResult {
  /** The main document with references in place of the moved values. */
  readonly main: JsonObject;
  /** Part files, to be written (create-only) before the main document. */
  readonly parts: readonly PartFile[];
}
