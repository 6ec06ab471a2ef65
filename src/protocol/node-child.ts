// How another process runs `aeromap node` as its child (the service's embedded node): the exit status that says
// the data folder is another node's, and the message that says the node listens.

/** sysexits' EX_TEMPFAIL: the folder's owner may be on its way out, so the parent may try again shortly. */
export const FOLDER_IN_USE_EXIT_CODE = 75;

/** Sent over the IPC channel once the node listens. */
export interface NodeReady {
  listening: number;
}
