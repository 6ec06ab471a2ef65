export { NodeClient, withRetries, type CreateTaskOptions, type DownloadOptions, type NodeAddress, type NodeClientOptions } from './client.ts';
export { NodeConnectionError, NodeError, NodeResponseError, NodeServerError } from './errors.ts';
export { NodeInfo, NodeOption, NodeTaskInfo, type TaskOptionPair, type UploadFile } from './types.ts';
