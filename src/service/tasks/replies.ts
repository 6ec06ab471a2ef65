// What the task routes share: the task a request names, read as its caller may, and result files sent with ranges
// under WebODM's download names.
import send from '@fastify/send';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { optionalUser } from '../auth.ts';
import { notFound } from '../errors.ts';
import { resultHeaders } from '../security-headers.ts';
import type { TaskRules } from './tasks.ts';

export const TASK_TAGS = ['tasks'];
export const TASK_ERRORS = { 400: Type.Ref('Error'), 403: Type.Ref('Error'), 404: Type.Ref('Error') };
/** Routes that store files: a file over the size limit, and a disk within its reserve (403: a quota used up). */
export const TASK_STORING_ERRORS = {
  ...TASK_ERRORS,
  413: Type.Ref('Error'),
  507: Type.Ref('Error', { description: "Insufficient Storage: the server's disk is within its reserve (MIN_FREE_DISK_GB)" }),
};

export type TaskIds = { project_id: number; task_id: number };

/** The task when the caller may read it: a viewer of its project, or anyone when it is public. */
export async function readableTask(rules: TaskRules, request: FastifyRequest) {
  const { project_id: projectId, task_id: taskId } = request.params as TaskIds;
  return (await rules.readable(optionalUser(request), projectId, taskId)).task;
}

/** Streams a result file with ranges, under WebODM's download name (inline only where its type is inert). */
export async function sendFile(request: FastifyRequest, reply: FastifyReply, file: string, filename: string, inline: boolean) {
  const sent = await send(request.raw, file, { root: '/', acceptRanges: true, cacheControl: false, dotfiles: 'allow' });
  if (sent.type === 'error') throw notFound();
  return resultHeaders(reply.code(sent.statusCode).headers(sent.headers), filename, inline).send(sent.stream);
}
