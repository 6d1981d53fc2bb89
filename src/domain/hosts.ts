// Which host names are this machine's own: settings whose default depends on whether the service
// listens where only this machine reaches it (metrics without a token, the first admin password).
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
