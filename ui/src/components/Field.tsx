/** Labelled form controls: every input has a <label> tied to it by id. */
import {useId, type ReactNode} from 'react';

interface Common {
  label: string;
  value: string;
  onChange: (v: string) => void;
  hint?: ReactNode;
  required?: boolean;
  className?: string;
  autoFocus?: boolean;
}

export function TextField(p: Common & {type?: string; placeholder?: string; inputMode?: 'numeric' | 'decimal' | 'text'; mono?: boolean}) {
  const id = useId();
  return (
    <div className={`field ${p.className ?? ''}`}>
      <label htmlFor={id}>{p.label}</label>
      <input
        id={id}
        type={p.type ?? 'text'}
        value={p.value}
        placeholder={p.placeholder}
        inputMode={p.inputMode}
        aria-required={p.required ? true : undefined}
        className={p.mono ? 'mono' : undefined}
        data-autofocus={p.autoFocus ? '' : undefined}
        autoComplete="off"
        spellCheck={false}
        onChange={(e) => p.onChange(e.target.value)}
      />
      {p.hint && <small className="hint">{p.hint}</small>}
    </div>
  );
}

export function TextArea(p: Common & {rows?: number; mono?: boolean}) {
  const id = useId();
  return (
    <div className={`field ${p.className ?? ''}`}>
      <label htmlFor={id}>{p.label}</label>
      <textarea
        id={id}
        rows={p.rows ?? 3}
        value={p.value}
        aria-required={p.required ? true : undefined}
        className={p.mono ? 'mono' : undefined}
        data-autofocus={p.autoFocus ? '' : undefined}
        spellCheck={false}
        onChange={(e) => p.onChange(e.target.value)}
      />
      {p.hint && <small className="hint">{p.hint}</small>}
    </div>
  );
}

export function SelectField(p: Common & {options: ReadonlyArray<{value: string; label: string}>}) {
  const id = useId();
  return (
    <div className={`field ${p.className ?? ''}`}>
      <label htmlFor={id}>{p.label}</label>
      <select id={id} value={p.value} onChange={(e) => p.onChange(e.target.value)}>
        {p.options.map((o) => (
          <option key={o.value} value={o.value}>
            {o.label}
          </option>
        ))}
      </select>
      {p.hint && <small className="hint">{p.hint}</small>}
    </div>
  );
}
