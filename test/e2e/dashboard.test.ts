// The dashboard in a real browser (Debian's Chromium, playwright-core) against a real service
// whose static node group is played by FakeNode heartbeats: an admin logs in through the page,
// watches the nodes come into service as they report, reads the streams, drains a node by
// keyboard alone and sees its state change without a reload, at 1280 px and at a phone's width;
// a ladder refused field by field, then created and deleted; the password change the service
// asks for, and a session that ends. Every wait is for the page's DOM, never a sleep. No page
// may violate its Content-Security-Policy, throw, or ask anything of another origin.
// Screenshots: test-output/dashboard/ (docs/dashboard.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Page } from 'playwright-core';
import { hash } from '../../src/auth/scrypt-task.js';
import { openBrowser, tabTo, type TestBrowser } from '../helpers/browser.js';
import { allInService } from '../helpers/fake-node.js';
import { body } from '../helpers/http.js';
import { ADMIN_PASSWORD, staticGroup, startTestService, type TestService } from '../helpers/service.js';

const IDS = ['o1', 'o2', 'o3', 'e1', 'e2', 'e3', 't1'];
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };

/** A static group whose nodes stay as the test leaves them (no FAULT for silence during the test). */
const group = () => staticGroup({ timing: { heartbeatMs: 200, nodeTimeout: '10m' } });

const row = (page: Page, id: string, state?: string) => page.locator(`tr[data-node="${id}"]${state ? `[data-state="${state}"]` : ''}`);

async function logIn(page: Page, svc: TestService, password: string): Promise<void> {
  await page.goto(`${svc.url}/`);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Password', { exact: true }).press('Enter');
}

function clean(t: import('ava').ExecutionContext, b: TestBrowser): void {
  t.deepEqual(b.trouble.csp, [], 'no Content-Security-Policy violation');
  t.deepEqual(b.trouble.errors, [], 'no uncaught error');
  t.deepEqual(b.trouble.foreign, [], 'nothing asked of another origin');
}

/** What sticks out past the viewport's right edge (nothing, when the page has no horizontal scroll). */
const overflowing = (page: Page): Promise<string[]> =>
  page.evaluate(`[...document.querySelectorAll('body *')]
    .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest('.tabs, .table-wrap:not(:has(> table.stack))'))
    .slice(0, 5).map((el) => el.tagName.toLowerCase() + '.' + [...el.classList].join('.') + ' ' + Math.round(el.getBoundingClientRect().right))`);

test.serial('log in, watch nodes come into service, read streams, drain a node by keyboard and see it change live, at 1280 px and on a phone', async (t) => {
  const svc = await startTestService({ groups: [group()] });
  t.teardown(() => svc.close());
  const b = await openBrowser(t, svc.url);
  const page = await b.page(DESKTOP);

  await logIn(page, svc, ADMIN_PASSWORD);
  t.is(new URL(page.url()).pathname, '/dashboard/', '/ leads to the dashboard');
  // The group's nodes are listed before any has reported.
  await row(page, 'e1').waitFor();
  t.not(await row(page, 'e1').getAttribute('data-state'), 'INSERVICE');
  await page.locator('.live', { hasText: 'Live' }).waitFor();
  await page.evaluate('window.sameDocument = true');
  await b.shot(page, '1-logged-in-nodes-not-reported');

  // The nodes report: each comes into service on the page as it happens.
  const nodes = await allInService(svc, 'g', IDS);
  for (const id of IDS) await row(page, id, 'INSERVICE').waitFor();

  // A stream: published on an origin, watched through an edge.
  const origin = body<{ nodeId: string }>(await svc.get('/as/v1/streams/live/cam1/publish?nodeGroup=g&region=r1')).nodeId;
  await nodes.get(origin)!.beat({ streams: [{ name: 'cam1', publishing: true }] });
  const edge = body<{ nodeId: string }>(await svc.get('/as/v1/streams/live/cam1/subscribe?nodeGroup=g&region=r1')).nodeId;
  await nodes.get(edge)!.beat({ subscribers: 3, streams: [{ name: 'cam1', subscribers: 3 }] });
  await page.getByRole('link', { name: 'Streams' }).click();
  const stream = page.locator('tr[data-stream="cam1"]');
  await stream
    .filter({ hasText: 'LIVE' })
    .filter({ hasText: `${edge} (3)` })
    .waitFor();
  t.regex(await stream.innerText(), new RegExp(origin));
  await b.shot(page, '2-streams');

  // Up close: the publisher's rate as its node reports it, charted live, with codec and resolution.
  const media = { bitrateIn: 1_200_000, uptimeMs: 95_000, video: { codec: 'H264', width: 640, height: 360, fps: 30 }, audio: { codec: 'AAC', sampleRate: 44_100 } };
  await nodes.get(origin)!.beat({ streams: [{ name: 'cam1', publishing: true, ...media }] });
  await stream.filter({ hasText: '1.2 Mb/s' }).waitFor();
  await page.getByRole('button', { name: 'Statistics of cam1' }).click();
  const detail = page.locator('.stream-detail');
  await detail.filter({ hasText: 'H264 640×360 @ 30' }).filter({ hasText: '1.2 Mb/s' }).waitFor();
  await nodes.get(origin)!.beat({ streams: [{ name: 'cam1', publishing: true, ...media, bitrateIn: 1_500_000 }] });
  await detail.filter({ hasText: '1.5 Mb/s' }).waitFor();
  t.true(await detail.locator('.rate-chart canvas').isVisible(), 'the bit rate chart is drawn');
  await b.shot(page, '2b-stream-detail');
  await detail.getByRole('button', { name: 'Close' }).click();

  // Webhooks: each endpoint with how its delivery stands.
  t.is((await svc.send('POST', '/as/v1/webhooks', { id: 'billing', url: 'http://127.0.0.1:9/hook', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', events: ['stream.*'] })).status, 201);
  await page.getByRole('link', { name: 'Webhooks' }).click();
  await page.locator('tr[data-webhook="billing"]').filter({ hasText: 'stream.*' }).waitFor();
  await b.shot(page, '2c-webhooks');
  await page.goBack();
  await page.getByRole('link', { name: 'Nodes' }).click();
  await row(page, edge, 'INSERVICE').waitFor();
  await b.shot(page, '3-nodes-in-service');

  // By keyboard alone: Tab to the edge's Drain button, Enter, and Enter again to confirm.
  const drain = page.getByRole('button', { name: `Drain ${edge}`, exact: true });
  await page.locator('body').click({ position: { x: 1, y: 1 } });
  const presses = await tabTo(page, async () => (await page.evaluate("document.activeElement?.getAttribute('aria-label')")) === `Drain ${edge}`);
  t.log(`Tab pressed ${presses} times to reach Drain ${edge}`);
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  t.is(await page.evaluate('document.activeElement?.textContent'), 'Drain', 'the dialog opens on its Drain button');
  await b.shot(page, '4-drain-dialog');
  await page.keyboard.press('Enter');
  // Busy, it stays draining: the page shows the new state and the event, without a reload.
  await row(page, edge, 'SOFT_SUNSET').waitFor();
  await page.locator('.event[data-type="node.state"]', { hasText: `${edge} INSERVICE → SOFT_SUNSET` }).waitFor();
  t.true(await page.evaluate('window.sameDocument === true'), 'the same document: no reload');
  t.is(await drain.isDisabled(), true, 'a draining node cannot be drained again');

  // A change made elsewhere (another admin, the API) shows up too.
  const other = edge === 'e1' ? 'e2' : 'e1';
  // Busy too, so that it stays draining (an empty node is retired at once).
  await nodes.get(other)!.beat({ subscribers: 2 });
  t.is((await svc.send('POST', `/as/v1/nodegroups/g/nodes/${other}/drain`, undefined)).status, 202);
  await row(page, other, 'SOFT_SUNSET').waitFor();
  await page.locator('.event[data-type="node.state"]', { hasText: `${other} INSERVICE → SOFT_SUNSET` }).waitFor();
  t.deepEqual(await overflowing(page), [], 'nothing wider than 1280 px');
  await b.shot(page, '5-drained-1280');

  // A phone: the same page, one card per node, nothing wider than the screen, actions reachable.
  await page.setViewportSize(PHONE);
  t.deepEqual(await overflowing(page), [], 'nothing wider than the phone');
  const doom = page.getByRole('button', { name: 'Destroy e3 now', exact: true });
  await doom.scrollIntoViewIfNeeded();
  const box = (await doom.boundingBox())!;
  t.true(box.x >= 0 && box.x + box.width <= PHONE.width, 'the Destroy button is on screen');
  t.true(box.height >= 36, 'and large enough to tap');
  await doom.click();
  await page.getByRole('dialog').waitFor();
  t.is(await page.evaluate('document.activeElement?.textContent'), 'Cancel', 'a destructive action opens on Cancel');
  await page.getByRole('button', { name: 'Destroy now', exact: true }).click();
  await row(page, 'e3', 'DOOMED').waitFor();
  await b.shot(page, '6-phone');
  await page.getByRole('link', { name: 'Timeline' }).click();
  await page.locator('.event[data-type="node.state"]', { hasText: 'e3 INSERVICE → DOOMED' }).waitFor();
  t.deepEqual(await overflowing(page), []);
  await b.shot(page, '7-phone-timeline');
  t.true(await page.evaluate('window.sameDocument === true'), 'still the same document');
  clean(t, b);
});

test.serial('a node token issued and revoked; a provision refused field by field, corrected, created and deleted; a node group created, replaced and deleted', async (t) => {
  const svc = await startTestService({ groups: [group()], config: { auth: { users: [{ username: 'backend', role: 'app', passwordHash: hash('app-user-password') }] } } });
  t.teardown(() => svc.close());
  const b = await openBrowser(t, svc.url);
  const page = await b.page(DESKTOP);
  // An app user's credentials are not enough.
  await page.goto(`${svc.url}/`);
  await page.getByLabel('User name').fill('backend');
  await page.getByLabel('Password', { exact: true }).fill('app-user-password');
  await page.getByLabel('Password', { exact: true }).press('Enter');
  await page.getByRole('alert').filter({ hasText: 'the dashboard needs the admin' }).waitFor();
  await page.getByLabel('User name').fill('admin');
  await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
  await page.getByLabel('Password', { exact: true }).press('Enter');

  // A node in full, and a token for its agent that the service takes; revoked, it is refused.
  await page.getByRole('button', { name: 'Details of o1' }).click();
  await page.getByRole('button', { name: 'Issue a token' }).click();
  const token = await page.getByLabel(/^Token/).inputValue();
  const beat = () => svc.send('POST', '/as/v1/nodes/o1/events', { ready: true, metrics: {} }, token);
  t.is((await beat()).status, 200, 'the issued token heartbeats for o1');
  await b.shot(page, '8-node-details');
  await page.getByRole('button', { name: 'Revoke tokens…' }).click();
  await page.getByRole('button', { name: 'Revoke every token of o1' }).click();
  await page.locator('.toast', { hasText: 'Every token issued to o1 so far is revoked' }).waitFor();
  t.is((await beat()).status, 401, 'revoked');
  await page.keyboard.press('Escape');
  await page.getByRole('dialog').waitFor({ state: 'detached' });

  await page.getByRole('link', { name: 'Provisions' }).click();
  await page.getByRole('button', { name: 'New provision' }).click();
  const editor = page.getByLabel('JSON');
  const template = await editor.inputValue();
  await editor.fill(template.replace('"videoBR": 2500000', '"videoBR": 5').replace('"region": "r1"', '"region": "mars"'));
  await page.getByRole('button', { name: 'Create provision' }).click();
  // The service's 400 names each field; each name selects its field in the editor.
  const problems = page.locator('#json-problems');
  await problems.getByRole('button', { name: 'body.streams[0].videoBR' }).waitFor();
  await problems.getByRole('button', { name: 'body.region' }).waitFor();
  await b.shot(page, '9-provision-refused');
  await problems.getByRole('button', { name: 'body.streams[0].videoBR' }).click();
  t.is(await page.evaluate("(({ value, selectionStart, selectionEnd }) => value.slice(selectionStart, selectionEnd))(document.getElementById('json-editor'))"), '5', 'the refused value is selected');
  await editor.fill(template);
  await page.getByRole('button', { name: 'Create provision' }).click();
  await page.locator('tr[data-provision="show"]').waitFor();
  t.is((await svc.get('/as/v1/provision/g/show')).status, 200, 'created in the service');
  await page.getByRole('button', { name: 'Delete provision show' }).click();
  await page.getByRole('button', { name: 'Delete provision', exact: true }).click();
  await page.locator('tr[data-provision="show"]').waitFor({ state: 'detached' });
  t.is((await svc.get('/as/v1/provision/g/show')).status, 404, 'deleted in the service');

  // Node groups: create one from the example, then delete it (its name typed to confirm).
  await page.goto(`${svc.url}/dashboard/#/groups`);
  await page.getByRole('button', { name: 'New node group' }).click();
  await page.getByRole('button', { name: 'Create node group' }).click();
  await row(page, 'studio-edge-1').waitFor();
  t.regex(page.url(), /#\/g\/studio\/nodes$/, 'the new group is shown');
  await page.goto(`${svc.url}/dashboard/#/groups`);
  // Its definition, as stored (defaults filled in), goes back as it is.
  await page.getByRole('button', { name: 'Replace node group studio' }).click();
  t.regex(await page.getByLabel('JSON').inputValue(), /"studio-origin-1"/);
  await page.getByRole('button', { name: 'Replace', exact: true }).click();
  await page.locator('.toast', { hasText: 'Node group studio replaced' }).waitFor();
  await page.getByRole('button', { name: 'Delete node group studio' }).click();
  const confirm = page.getByRole('button', { name: 'Delete node group', exact: true });
  t.true(await confirm.isDisabled(), 'not before the name is typed');
  await page.getByLabel('Type studio to confirm').fill('studio');
  await confirm.click();
  await page.locator('tr[data-group="studio"]').waitFor({ state: 'detached' });
  await b.shot(page, '10-groups');
  clean(t, b);
});

test.serial('the generated password must be changed first (public bind), and a session that ends asks to log in again', async (t) => {
  const svc = await startTestService({ groups: [group()], config: { server: { host: '0.0.0.0', port: 0 } }, env: { SWITCHYARD_ADMIN_PASSWORD: '' }, noLogin: true });
  t.teardown(() => svc.close());
  const url = svc.url.replace('0.0.0.0', '127.0.0.1');
  const b = await openBrowser(t, url);
  const page = await b.page(DESKTOP);
  const initial = readFileSync(join(svc.dataDir, 'initial-admin-password'), 'utf8').trim();
  await page.goto(`${url}/`);
  await page.getByLabel('Password', { exact: true }).fill(initial);
  await page.getByLabel('Password', { exact: true }).press('Enter');
  await page.getByRole('heading', { name: 'Change the admin password' }).waitFor();
  await b.shot(page, '11-password-change');
  await page.getByLabel('Current password').fill(initial);
  await page.getByLabel('New password (at least 12 characters)').fill('operator-chosen-secret');
  await page.getByLabel('New password again').fill('operator-chosen-secret');
  await page.getByLabel('New password again').press('Enter');
  await row(page, 'o1').waitFor();

  // The password changes elsewhere: this tab's token stops working, and the page says so.
  const login = await fetch(`${url}/as/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: 'operator-chosen-secret' }),
  });
  const token = ((await login.json()) as { accessToken: string }).accessToken;
  t.is((await svc.send('POST', '/as/v1/auth/password', { currentPassword: 'operator-chosen-secret', newPassword: 'changed-elsewhere-123' }, token)).status, 204);
  await page.locator('#login-notice', { hasText: 'Log in again' }).waitFor();
  await b.shot(page, '12-session-ended');
  t.is(await page.evaluate("sessionStorage.getItem('switchyard.token')"), null, 'the dead token is forgotten');
  await page.getByLabel('Password', { exact: true }).fill('changed-elsewhere-123');
  await page.getByLabel('Password', { exact: true }).press('Enter');
  await row(page, 'o1').waitFor();
  t.deepEqual(b.trouble.csp, []);
  t.deepEqual(b.trouble.errors, []);
  t.deepEqual(b.trouble.foreign, []);
});

test.serial('the API docs page renders every operation of the OpenAPI document, from this origin only', async (t) => {
  const svc = await startTestService({ groups: [group()] });
  t.teardown(() => svc.close());
  const b = await openBrowser(t, svc.url);
  const page = await b.page(DESKTOP);
  const doc = body<{ paths: Record<string, Record<string, unknown>> }>(await svc.get('/as/v1/openapi.json', null));
  const operations = Object.values(doc.paths).reduce((n, methods) => n + Object.keys(methods).length, 0);
  // From the dashboard, in the same tab: the docs page carries its token for "Try it out".
  await logIn(page, svc, ADMIN_PASSWORD);
  await row(page, 'o1').waitFor();
  await page.getByRole('link', { name: 'API docs' }).click();
  await page
    .locator('.opblock')
    .nth(operations - 1)
    .waitFor();
  t.is(new URL(page.url()).pathname, '/as/v1/docs');
  t.is(await page.locator('.opblock').count(), operations);
  // An operation opens on its description and its example.
  await page.locator('.opblock-summary', { hasText: '/as/v1/auth/login' }).click();
  const login = page.locator('.opblock.is-open');
  await login.getByText('Failed logins are refused for a while').waitFor();
  await login.getByText('correct-horse-battery').first().waitFor();
  await b.shot(page, '13-api-docs');
  // "Try it out" on GET /as/v1/nodegroups answers 200: authorised, and allowed by the page's CSP.
  await page.locator('.opblock-summary', { hasText: /^GET\s*\/as\/v1\/nodegroups\s*Endpoint 7/ }).click();
  const list = page.locator('.opblock.is-open', { hasText: 'Endpoint 7' });
  await list.getByRole('button', { name: 'Try it out' }).click();
  await list.getByRole('button', { name: 'Execute' }).click();
  await list.locator('.live-responses-table .response-col_status', { hasText: '200' }).waitFor();
  clean(t, b);
});
