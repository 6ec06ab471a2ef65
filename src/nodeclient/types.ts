// The shapes of NodeODM API 2.x answers that the service reads. Only the fields it uses are required, so
// nodes that add fields (ClusterODM, newer NodeODM) stay compatible.
import { type Static, Type } from '@sinclair/typebox';

export const NodeInfo = Type.Object({
  version: Type.String(),
  taskQueueCount: Type.Integer({ minimum: 0 }),
  maxImages: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  engineVersion: Type.Optional(Type.String()),
  /** Older nodes name the engine version this way. */
  odmVersion: Type.Optional(Type.String()),
  engine: Type.Optional(Type.String()),
});
export type NodeInfo = Static<typeof NodeInfo>;

export const NodeOption = Type.Object({
  name: Type.String(),
  type: Type.String(),
  value: Type.String(),
  domain: Type.Unknown(),
  help: Type.String(),
});
export type NodeOption = Static<typeof NodeOption>;

export const NodeOptions = Type.Array(NodeOption);

// Only the status is certain: a proxy answers for a task it is still forwarding to a node, or failed to forward,
// from its own table (ClusterODM: a status and a line of output, no progress, time or image count).
export const NodeTaskInfo = Type.Object({
  uuid: Type.Optional(Type.String()),
  name: Type.Optional(Type.String()),
  /** Milliseconds since the epoch. */
  dateCreated: Type.Optional(Type.Number()),
  processingTime: Type.Optional(Type.Number()),
  status: Type.Object({ code: Type.Integer(), errorMessage: Type.Optional(Type.String()) }),
  imagesCount: Type.Optional(Type.Integer()),
  progress: Type.Optional(Type.Number()),
  output: Type.Optional(Type.Array(Type.String())),
});
export type NodeTaskInfo = Static<typeof NodeTaskInfo>;

export const NewTask = Type.Object({ uuid: Type.String({ minLength: 1 }) });
export const ActionAnswer = Type.Object({ success: Type.Literal(true) });

/** A file to upload: the name the node gets, and where it is on disk. */
export interface UploadFile {
  name: string;
  path: string;
}

export interface TaskOptionPair {
  name: string;
  value: unknown;
}
