// The WebRTC clients the tests use are the demo's (npm run demo:webrtc): real werift peers, ffmpeg's VP8.
export * from '../../src/cli/webrtc-client.js';

import { VideoSource, WhepViewer, WhipPublisher } from '../../src/cli/webrtc-client.js';

/** ffmpeg's VP8, a WHIP publisher of it and a WHEP viewer, all closed when the test ends; then `after` (a service to close). */
export async function mediaClients(t: { teardown(f: () => Promise<void>): void }, after: () => Promise<void> = async () => {}) {
  const source = await VideoSource.start();
  const publisher = new WhipPublisher(source);
  const viewer = new WhepViewer();
  t.teardown(async () => {
    await Promise.allSettled([viewer.close(), publisher.close()]);
    await source.stop();
    await after();
  });
  return { source, publisher, viewer };
}
