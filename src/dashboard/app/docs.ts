// Starts swagger-ui (its bundle, a classic script loaded before this module, defines
// SwaggerUIBundle) on the service's own OpenAPI document. Nothing is fetched from elsewhere: no
// validator badge, no fonts. In a tab where the dashboard is logged in, "Try it out" carries
// its token.
import { session } from './api.js';
import './docs.css';

interface SwaggerUi {
  preauthorizeApiKey(scheme: string, value: string): void;
}
declare global {
  interface Window {
    SwaggerUIBundle?: (options: Record<string, unknown>) => SwaggerUi;
  }
}

const token = session.token;
const ui = window.SwaggerUIBundle?.({
  url: '/as/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  displayRequestDuration: true,
  defaultModelsExpandDepth: 0,
  docExpansion: 'list',
  filter: true,
  tryItOutEnabled: false,
  onComplete: () => {
    if (token) ui?.preauthorizeApiKey('bearer', token);
  },
});
if (!ui) document.getElementById('swagger-ui')!.textContent = 'swagger-ui did not load.';
