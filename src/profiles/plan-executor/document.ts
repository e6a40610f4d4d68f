import { z } from 'zod';
import { canonicalJson, parseJson } from '../../codec/canonical-json.js';
import { type JsonObject } from '../../contract/json.js';
import { documentChecksum, verifyDocument } from '../../codec/json-document.js';
import { type DocumentFormat } from '../../contract/document-format.js';
import { gunzip, isGzip } from '../../codec/gzip.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { CheckpointError } from '../../contract/errors.js';
import { FORMAT_VERSION, type Integrity, type SnapshotDraft } from '../../contract/snapshot.js';
import { assertValid, documentValidator } from '../../codec/document-validator.js';
import { type JsonSchema } from '../../contract/json.js';
import * as generated from '../../codec/generated/plan-executor-document.js';
import {
  PlanExecutorDocumentSchema,
  type PlanExecutorDocument,
  type PlanExecutorPayload,
  type PlanExecutorStatus,
  type PlanExecutorTrigger,
} from './schema.js';
import { decodePlanExecutorForeign, keepPlanExecutorForeignFields } from './foreign.js';

/** JSON Schema (draft 2020-12) of `NN-CHECKPOINT.json` as savepoint writes it. */
export const planExecutorJsonSchema = z.toJSONSchema(PlanExecutorDocumentSchema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;

// Generated at build time from planExecutorJsonSchema (tests/codec/validators.test.ts keeps them equal).
const validate = documentValidator(generated.validate);

/** The spec document of a draft, without `integrity`. */
function specFields(draft: SnapshotDraft<PlanExecutorPayload>): Omit<PlanExecutorDocument, 'integrity'> {
  return { ...draft.payload, status: draft.status as PlanExecutorStatus, last_activity: draft.createdAt };
}

/**
 * The planExecutor document format. Unlike the other JSON profiles, whose `integrity`
 * holds only the checksum and format version, `NN-CHECKPOINT.json` keeps savepoint's
 * bookkeeping (snapshot id, sequence, trigger) inside `integrity` too, so that the spec
 * gets exactly one added member. The checksum covers the whole document (the spec
 * fields and the rest of `integrity`), as `documentChecksum` defines it.
 */
export const planExecutorDocumentFormat: DocumentFormat<PlanExecutorPayload> = {
  extension: '.json',
  jsonSchema: planExecutorJsonSchema,
  async encode(draft) {
    if (draft.runId !== draft.payload.plan_number) {
      throw new CheckpointError('checkpoint_schema_invalid', 'a planExecutor snapshot must have its run id equal to plan_number', {
        details: { field: 'plan_number' },
      });
    }
    const meta = {
      format_version: FORMAT_VERSION,
      algorithm: 'sha256' as const,
      snapshot_id: draft.id,
      sequence: draft.sequence,
      source: draft.source as PlanExecutorTrigger,
      source_details: draft.sourceDetails,
      ...(draft.priority ? { priority: draft.priority } : {}),
    };
    const unsealed = { ...specFields(draft), integrity: meta } as unknown as JsonObject;
    const checksum = await documentChecksum(unsealed);
    const document: PlanExecutorDocument = { ...specFields(draft), integrity: { ...meta, checksum } };
    assertValid(validate(document), `checkpoint ${draft.sequence} of plan ${draft.runId}`);
    const integrity: Integrity = { format_version: meta.format_version, algorithm: 'sha256', checksum };
    return { bytes: utf8Encode(canonicalJson(document)), snapshot: { ...draft, integrity } };
  },
  async decode(bytes, where) {
    const plain = isGzip(bytes) ? gunzip(bytes, where) : bytes;
    const document = parseJson(utf8Decode(plain, where), where);
    assertValid(validate(document), where);
    await verifyDocument(document as JsonObject, where);
    const { integrity, status, last_activity, ...payload } = document as PlanExecutorDocument;
    return {
      id: integrity.snapshot_id,
      runId: payload.plan_number,
      sequence: integrity.sequence,
      createdAt: last_activity,
      source: integrity.source,
      sourceDetails: integrity.source_details,
      ...(integrity.priority ? { priority: integrity.priority } : {}),
      status,
      payload,
      integrity: { format_version: integrity.format_version, algorithm: integrity.algorithm, checksum: integrity.checksum },
    };
  },
  // The file other executors rewrite after every task: their version is read with a warning,
  // and their extra fields survive savepoint's next rewrite (docs/profiles.md).
  decodeForeign: decodePlanExecutorForeign,
  keepForeignFields: keepPlanExecutorForeignFields,
};
