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
