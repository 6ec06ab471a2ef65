// The processing node as other parts of Aeromap use it.
export { startNode, defaultEnginePath, type NodeOptions, type RunningNode } from './server.ts';
export { registerNodeCommand } from './command.ts';
