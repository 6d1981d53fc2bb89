// The WebRTC clients the tests use are the demo's (npm run demo:webrtc): real werift peers, ffmpeg's VP8.
export * from '../../src/cli/webrtc-client.js';
