// A task's state as both APIs give it: NodeODM's status codes (which WebODM's API repeats) and WebODM's
// pending actions. The service, the node, the CLI and the web application all read them from here.

export const TaskStatus = {
  QUEUED: 10,
  RUNNING: 20,
  FAILED: 30,
  COMPLETED: 40,
  CANCELED: 50,
} as const;
export type TaskStatusCode = (typeof TaskStatus)[keyof typeof TaskStatus];

export const STATUS_NAMES: Record<TaskStatusCode, string> = {
  [TaskStatus.QUEUED]: 'Queued',
  [TaskStatus.RUNNING]: 'Running',
  [TaskStatus.FAILED]: 'Failed',
  [TaskStatus.COMPLETED]: 'Completed',
  [TaskStatus.CANCELED]: 'Canceled',
};

/** Whether a task in this state will change no more unless a client restarts it. */
export function isFinished(status: number): boolean {
  return status === TaskStatus.COMPLETED || status === TaskStatus.FAILED || status === TaskStatus.CANCELED;
}

/** What the service is doing to a task on a user's request (WebODM's `pending_action`). */
export const PendingAction = { CANCEL: 1, REMOVE: 2, RESTART: 3, RESIZE: 4, IMPORT: 5, COMPACT: 6 } as const;

export const PENDING_ACTION_NAMES: Record<number, string> = {
  [PendingAction.CANCEL]: 'Canceling',
  [PendingAction.REMOVE]: 'Removing',
  [PendingAction.RESTART]: 'Restarting',
  [PendingAction.RESIZE]: 'Resizing',
  [PendingAction.IMPORT]: 'Importing',
  [PendingAction.COMPACT]: 'Compacting',
};
