// t("key", {vars}) looks a string up in the active catalogue (English today).
import en from "./i18n/en.js";

const catalogue = en;

export function t(key, vars = {}) {
  const text = catalogue[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

// A lazily loaded screen adds its own strings (e.g. i18n/en-data.js) when it loads.
export function addStrings(strings) { Object.assign(catalogue, strings); }
