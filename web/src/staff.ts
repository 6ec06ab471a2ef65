// Whether the signed-in user is staff, which the header (its Administration link) and the administration
// pages (what they offer) both ask.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, session } from './api.ts';

const answers = new Map<number, Promise<boolean | null>>();

/** Asked once per user: a question that failed (null) is asked again next time. */
function askStaff(userId: number): Promise<boolean | null> {
  let answer = answers.get(userId);
  if (!answer) {
    answer = api<{ is_staff: boolean; is_superuser: boolean }>(`/api/admin/users/${userId}/`).then(
      (user) => user.is_staff || user.is_superuser,
      (error: unknown) => (error instanceof ApiError && error.status === 403 ? false : null),
    );
    answers.set(userId, answer);
    void answer.then((staff) => staff === null && answers.delete(userId));
  }
  return answer;
}

/**
 * Whether the signed-in user is staff: the session names the user but not their rights, and only staff may
 * read /api/admin/users/{id}/. Null until known (and when the question itself failed), so nothing flickers.
 */
export function useStaff(): boolean | null {
  const [staff, setStaff] = useState<boolean | null>(null);
  const userId = session.value?.user_id;
  useEffect(() => {
    if (typeof userId !== 'number') return;
    let current = true;
    void askStaff(userId).then((answer) => current && setStaff(answer));
    return () => {
      current = false;
    };
  }, [userId]);
  return staff;
}
