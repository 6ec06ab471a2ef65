export { NodeClient, type NodeAddress, type NodeClientOptions } from './client.ts';
export { NodeConnectionError, NodeError, NodeResponseError, NodeServerError } from './errors.ts';
export { NodeInfo, NodeOption } from './types.ts';
