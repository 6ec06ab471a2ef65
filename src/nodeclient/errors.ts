// What can go wrong when talking to a NodeODM-compatible node. The caller decides by class: a connection
// error is worth retrying later, a response error is the node's own refusal and will not change by itself.

export class NodeError extends Error {}

/** The node could not be reached, or did not answer in time. */
export class NodeConnectionError extends NodeError {}

/** The node answered with an error of its own ({"error": ...}, often with HTTP 200, as NodeODM does). */
export class NodeResponseError extends NodeError {}

/** The node answered something that is not the protocol: a 5xx, a non-JSON body, a body of the wrong shape. */
export class NodeServerError extends NodeError {}
