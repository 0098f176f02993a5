// A few stroke icons as inline SVG (built with the DOM, so the CSP needs no
// exception and no icon font or emoji font is required).
const PATHS = {
  clip: "M21 12.5l-8.5 8.5a5 5 0 0 1-7-7L14 5.5a3.3 3.3 0 0 1 4.7 4.7L10.2 18.7a1.7 1.7 0 0 1-2.4-2.4L15.5 8.6",
  task: "M4 5h16v14H4z M8 12l3 3 5-6",
  comment: "M4 5h16v11H9l-5 4z",
  pin: "M9 3h6l-1 6 4 4H6l4-4z M12 13v8",
  more: "M5 12h.01 M12 12h.01 M19 12h.01",
  smile: "M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z M8.5 14a4 4 0 0 0 7 0 M9 9.5h.01 M15 9.5h.01",
  menu: "M4 7h16 M4 12h16 M4 17h16",
  image: "M4 5h16v14H4z M4 16l5-5 4 4 3-3 4 4 M15.5 9h.01",
};

export function icon(name) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", `icon icon-${name}`);
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", PATHS[name]);
  svg.append(path);
  return svg;
}
