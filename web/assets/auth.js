// Sign-in and sign-up (the first user becomes the admin).
import { api } from "./api.js";
import { clear, field, h, toast } from "./dom.js";
import { t } from "./i18n.js";
import { state } from "./store.js";
import { checkNewPassword } from "./passwords.js";

// The message for a password the server would refuse ("" when it is fine).
export const passwordMessage = (problem) => (problem ? t(problem === "short" ? "passwordTooShort" : "passwordTooLong") : "");

export function renderAuth(container, { onSignedIn }) {
  const firstUser = state.profile && !state.profile.initialized;
  let mode = firstUser ? "signup" : "signin";
  const draw = () => {
    const signup = mode === "signup";
    const [userRow, username] = field(t("username"), h("input", { class: "input", name: "username", autocomplete: "username", required: true, autocapitalize: "none", spellcheck: "false" }));
    // Sign-up shows the server's rule up front and checks it as it is typed.
    const [pwRow, password] = field(t("password"), h("input", { class: "input", type: "password", name: "password", autocomplete: signup ? "new-password" : "current-password", required: true }),
      signup ? t("passwordRule") : undefined);
    if (signup) checkNewPassword(password, passwordMessage);
    const [pw2Row, password2] = field(t("passwordConfirm"), h("input", { class: "input", type: "password", name: "password2", autocomplete: "new-password", required: true }));
    const submit = h("button", { class: "btn primary wide", type: "submit" }, signup ? t("signUp") : t("signIn"));
    // Errors stay in the form (issue 19, defect 1): a 401 here is a wrong
    // password, not a lost session, so the form is not redrawn and keeps the username.
    const error = h("p", { class: "form-error", role: "alert", hidden: true });
    const form = h("form", { class: "stack", onsubmit: async (e) => {
      e.preventDefault();
      if (signup && password.value !== password2.value) { toast(t("passwordMismatch"), "error"); return; }
      submit.disabled = true;
      try {
        error.hidden = true;
        if (signup) await api("/users", { method: "POST", quiet: true, body: { username: username.value.trim(), password: password.value } });
        if (signup && state.profile) state.profile.initialized = true; // a later sign-out offers Sign in (defect 2)
        const res = await api("/auth/signin", { method: "POST", quiet: true,
          body: { passwordCredentials: { username: username.value.trim(), password: password.value } } });
        onSignedIn(res);
      } catch (err) {
        error.textContent = err.status === 401 && !signup ? t("wrongPassword") : err.message || t("error");
        error.hidden = false;
        password.value = "";
        password.focus();
      } finally { submit.disabled = false; }
    } }, userRow, pwRow, signup ? pw2Row : null, error, submit);
    const canSwitch = !firstUser && (state.profile?.allowRegistration || signup);
    clear(container, h("main", { class: "auth", id: "main" },
      h("div", { class: "auth-card panel" },
        h("div", { class: "brand" }, h("span", { class: "logo", "aria-hidden": "true" }, "◐"), t("appName")),
        h("h1", {}, signup ? t("signUpTitle") : t("signInTitle")),
        firstUser ? h("p", { class: "muted" }, t("signUpFirst")) : null,
        form,
        canSwitch ? h("p", { class: "muted small" }, signup ? t("haveAccount") : t("noAccount"), " ",
          h("button", { type: "button", class: "link", onclick: () => { mode = signup ? "signin" : "signup"; draw(); } },
            signup ? t("signIn") : t("signUp"))) : null)));
    username.focus();
  };
  draw();
}
