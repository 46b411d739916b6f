/**
 * Experience memory as data: the entries the library list shows, the INDEX problems as lines, a
 * session's records newest first and in words, the plan request, and which socket events change
 * what the Experience tab shows.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { NiniEvent } from '../api';
import {
  describeRecord,
  ExperienceCandidate,
  ExperienceEntry,
  experienceChanges,
  ExperienceRecord,
  newestFirst,
  planRequest,
  problemLines,
  scoreText,
  visibleEntries
} from '../memory';

function entry(
  id: string,
  level: 'team' | 'project',
  status = 'active'
): ExperienceEntry {
  return {
    id,
    level,
    status,
    title: `title of ${id}`,
    type: 'knowledge',
    scope: 'narrow',
    strength: 'hypothesis',
    trigger: '',
    reference: `${level}/knowledge/${id}.md`
  };
}

function candidate(id: string, level: 'team' | 'project'): ExperienceCandidate {
  return {
    id,
    level,
    title: id,
    decision: 'use the median',
    alternatives: ['mean'],
    signal: 'outliers',
    type: 'knowledge',
    stage: 'analysis',
    trigger: '',
    notes: []
  };
}

function event(seq: number, type: string, data: any = {}): NiniEvent {
  return { seq, type, turn_id: 't1', tool_call_id: null, data };
}

test('deprecated entries are listed only when asked, team before project', () => {
  const entries = [
    entry('EXP-0002', 'project'),
    entry('EXP-0003', 'team', 'deprecated'),
    entry('EXP-0001', 'team')
  ];
  assert.deepEqual(
    visibleEntries(entries, false).map(e => e.id),
    ['EXP-0001', 'EXP-0002']
  );
  assert.deepEqual(
    visibleEntries(entries, true).map(e => `${e.level}:${e.id}`),
    ['team:EXP-0001', 'team:EXP-0003', 'project:EXP-0002']
  );
  assert.equal(entries[0].id, 'EXP-0002'); // the input is left as it was
});

test('INDEX problems become one line each, named by their library', () => {
  assert.deepEqual(problemLines({ team: ['row 3: no file'], project: [] }), [
    'team: row 3: no file'
  ]);
  assert.deepEqual(problemLines(null), []);
});

test('scores show with two decimals, a missing one as a dash', () => {
  assert.equal(scoreText(0.875), '0.88');
  assert.equal(scoreText(1), '1.00');
  assert.equal(scoreText(undefined), '—');
});

test("a session's records come newest first, in words", () => {
  const records: ExperienceRecord[] = [
    {
      type: 'experience_matched',
      turn_id: 't1',
      seq: 3,
      ts: '2025-01-01T10:00:00',
      data: {
        stage: 'analysis',
        matches: [
          {
            level: 'team',
            id: 'EXP-0001',
            title: 'Use the median',
            file: 'team/knowledge/EXP-0001.md',
            score: 0.8125
          }
        ]
      }
    },
    {
      type: 'experience_captured',
      turn_id: 't2',
      seq: 9,
      ts: '2025-01-01T10:05:00',
      data: {
        stage: 'analysis',
        kept: ['Join on the new table'],
        dropped: [
          {
            title: 'odd data',
            reason: 'NO_ALTERNATIVES',
            why: 'no alternative named'
          }
        ]
      }
    }
  ];
  const sorted = newestFirst(records);
  assert.deepEqual(
    sorted.map(r => r.seq),
    [9, 3]
  );
  assert.deepEqual(describeRecord(sorted[0]), {
    heading: 'Captured after the run (stage: analysis): 1 kept, 1 dropped',
    lines: [
      'Kept: Join on the new table',
      'Dropped: odd data (no alternative named)'
    ]
  });
  assert.deepEqual(describeRecord(sorted[1]), {
    heading: 'Warned at the start of the run (stage: analysis)',
    lines: ['Use the median · team EXP-0001 · score 0.81']
  });
});

test('the plan request keeps the order shown and names each target', () => {
  const request = planRequest([
    { candidate: candidate('b2', 'team'), target: 'project' },
    { candidate: candidate('a1', 'project'), target: 'project' }
  ]);
  assert.deepEqual(request, {
    ids: ['b2', 'a1'],
    targets: { b2: 'project', a1: 'project' }
  });
});

test('only experience events change the tab: matches the run, captures both', () => {
  assert.deepEqual(
    experienceChanges([event(1, 'assistant_delta'), event(2, 'done')]),
    { run: false, pending: false }
  );
  assert.deepEqual(experienceChanges([event(1, 'experience_matched')]), {
    run: true,
    pending: false
  });
  assert.deepEqual(experienceChanges([event(5, 'experience_captured')]), {
    run: true,
    pending: true
  });
  assert.deepEqual(
    experienceChanges([
      event(6, 'stop_hook_note', {
        hook: 'experience_capture',
        text: '已暂存 1 条经验候选'
      })
    ]),
    { run: false, pending: true }
  );
  assert.deepEqual(
    experienceChanges([
      event(7, 'stop_hook_note', { hook: 'skill_enhance', text: 'x' })
    ]),
    { run: false, pending: false }
  );
});
