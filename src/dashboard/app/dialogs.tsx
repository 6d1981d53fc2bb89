// Modal dialogs on the native <dialog> element (focus kept inside, Escape closes, focus goes back
// to what opened it): a confirmation for actions that cannot be undone, and a JSON editor whose
// refusals (a 400's errors[]) are listed by field path, each one selecting its field in the text.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { ApiError, type FieldError } from './api.js';
import { locate } from './jsonpath.js';

export type ModalSpec =
  | { kind: 'confirm'; title: string; body: ComponentChildren; confirm: string; danger?: boolean; typeToConfirm?: string; run: () => Promise<void> }
  | { kind: 'json'; title: string; intro: ComponentChildren; initial: string; submit: string; run: (text: string) => Promise<void> }
  | { kind: 'view'; title: string; body: ComponentChildren };

let current: ModalSpec | null = null;
const listeners = new Set<() => void>();
const setModal = (spec: ModalSpec | null) => {
  current = spec;
  for (const l of listeners) l();
};
export const openModal = (spec: ModalSpec) => setModal(spec);

export function ModalHost() {
  const [, rerender] = useState(0);
  useEffect(() => {
    const l = () => rerender((n) => n + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  if (!current) return null;
  // A new key per spec: each opening starts from a fresh dialog.
  if (current.kind === 'view') return <View key={current.title} spec={current} />;
  return current.kind === 'confirm' ? <Confirm key={current.title} spec={current} /> : <JsonEditor key={current.title} spec={current} />;
}

function Shell(props: { title: string; busy: boolean; children: ComponentChildren; onSubmit: () => void; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    ref.current?.showModal();
    return () => {
      if (opener?.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      class={props.wide ? 'modal wide' : 'modal'}
      aria-labelledby="modal-title"
      onCancel={(e) => {
        e.preventDefault();
        if (!props.busy) setModal(null);
      }}
    >
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (!props.busy) props.onSubmit();
        }}
      >
        <h2 id="modal-title">{props.title}</h2>
        {props.children}
      </form>
    </dialog>
  );
}

function Confirm({ spec }: { spec: Extract<ModalSpec, { kind: 'confirm' }> }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [typed, setTyped] = useState('');
  const armed = spec.typeToConfirm === undefined || typed === spec.typeToConfirm;
  const go = async () => {
    if (!armed) return;
    setBusy(true);
    setError(null);
    try {
      await spec.run();
      setModal(null);
    } catch (err) {
      setError(err instanceof ApiError ? `${err.detail} (${err.code})` : String(err));
      setBusy(false);
    }
  };
  return (
    <Shell title={spec.title} busy={busy} onSubmit={() => void go()}>
      <div class="modal-body">{spec.body}</div>
      {spec.typeToConfirm !== undefined && (
        <>
          <label for="type-to-confirm">
            Type <code>{spec.typeToConfirm}</code> to confirm
          </label>
          <input id="type-to-confirm" autocomplete="off" spellcheck={false} value={typed} onInput={(e) => setTyped((e.target as HTMLInputElement).value)} autofocus />
        </>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="modal-actions">
        {/* Destructive actions start on Cancel: Enter alone must not destroy. */}
        <button type="button" onClick={() => setModal(null)} disabled={busy} autofocus={spec.danger && spec.typeToConfirm === undefined}>
          Cancel
        </button>
        <button type="submit" class={spec.danger ? 'danger' : 'primary'} disabled={busy || !armed} autofocus={!spec.danger}>
          {busy ? 'Working…' : spec.confirm}
        </button>
      </div>
    </Shell>
  );
}

function JsonEditor({ spec }: { spec: Extract<ModalSpec, { kind: 'json' }> }) {
  const [text, setText] = useState(spec.initial);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<{ detail: string; errors: FieldError[] } | null>(null);
  const area = useRef<HTMLTextAreaElement>(null);
  const select = (path: string) => {
    const span = locate(text, path);
    const el = area.current;
    if (!el) return;
    el.focus();
    if (!span) return;
    el.setSelectionRange(span.start, span.end);
    // Browsers do not scroll a textarea to its selection: bring the field's line into view.
    const line = el.value.slice(0, span.start).split('\n').length - 1;
    const height = parseFloat(getComputedStyle(el).lineHeight) || 18;
    el.scrollTop = Math.max(0, line * height - el.clientHeight / 3);
  };
  const go = async () => {
    try {
      JSON.parse(text);
    } catch (err) {
      setProblem({ detail: `not valid JSON: ${(err as Error).message}`, errors: [] });
      area.current?.focus();
      return;
    }
    setBusy(true);
    setProblem(null);
    try {
      await spec.run(text);
      setModal(null);
    } catch (err) {
      setBusy(false);
      if (err instanceof ApiError) setProblem({ detail: `${err.code}: ${err.errors.length > 0 ? 'the service refused these fields' : err.detail}`, errors: err.errors });
      else setProblem({ detail: String(err), errors: [] });
    }
  };
  return (
    <Shell title={spec.title} busy={busy} onSubmit={() => void go()} wide>
      <div class="modal-body">{spec.intro}</div>
      <label class="editor-label" for="json-editor">
        JSON
      </label>
      <textarea
        id="json-editor"
        ref={area}
        class="editor"
        spellcheck={false}
        autocapitalize="off"
        autocomplete="off"
        rows={18}
        value={text}
        aria-invalid={problem ? 'true' : 'false'}
        aria-describedby={problem ? 'json-problems' : undefined}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        autofocus
      />
      {problem && (
        <div id="json-problems" class="problems" role="alert">
          <p>{problem.detail}</p>
          {problem.errors.length > 0 && (
            <ul>
              {problem.errors.map((e) => (
                <li key={e.path + e.message}>
                  <button type="button" class="link" onClick={() => select(e.path)} title="Select this field in the editor">
                    <code>{e.path}</code>
                  </button>{' '}
                  {e.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      <div class="modal-actions">
        <button type="button" onClick={() => setModal(null)} disabled={busy}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Sending…' : spec.submit}
        </button>
      </div>
    </Shell>
  );
}

function View({ spec }: { spec: Extract<ModalSpec, { kind: 'view' }> }) {
  return (
    <Shell title={spec.title} busy={false} onSubmit={() => setModal(null)} wide>
      <div class="modal-body">{spec.body}</div>
      <div class="modal-actions">
        <button type="submit" class="primary" autofocus>
          Close
        </button>
      </div>
    </Shell>
  );
}
