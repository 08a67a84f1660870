// occ console: sends the console's forms to the JSON API with the session's CSRF token, and
// keeps the live parts of a page current. Written for occ; no dependencies, no inline script.
(function () {
  "use strict";

  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.getAttribute("content") : "";

  function setPath(target, path, value) {
    var keys = path.split(".");
    var node = target;
    for (var i = 0; i < keys.length - 1; i += 1) {
      if (typeof node[keys[i]] !== "object" || node[keys[i]] === null) {
        node[keys[i]] = {};
      }
      node = node[keys[i]];
    }
    node[keys[keys.length - 1]] = value;
  }

  function pick(source, path) {
    return path.split(".").reduce(function (node, key) {
      return node === null || node === undefined ? node : node[key];
    }, source);
  }

  function show(form, text) {
    var box = form.querySelector("[data-result]") || document.getElementById("messages");
    if (box) {
      box.textContent = text;
      box.hidden = false;
    }
  }

  function fill(template, values) {
    return template.replace(/\{([A-Za-z]+)\}/g, function (_, name) {
      var value = values ? values[name] : undefined;
      return value === undefined || value === null ? "" : encodeURIComponent(String(value));
    });
  }

  // a request to the API on the session's cookie; a 401 (the session ended) goes to sign-in
  // and answers null
  async function request(url, init) {
    var response = await fetch(url, Object.assign({ credentials: "same-origin" }, init));
    if (response.status === 401) {
      window.location.assign("/console/sign-in?next=" + encodeURIComponent(window.location.pathname));
      return null;
    }
    return response;
  }

  // what a refused request says: the problem's detail or title, else its status
  function refusal(problem, status) {
    return (problem && (problem.detail || problem.title)) || "The request failed (" + status + ").";
  }

  async function submit(form) {
    var parts = form.getAttribute("data-api").split(" ");
    var method = parts[0];
    var url = parts[1];
    var confirmText = form.getAttribute("data-confirm");
    if (confirmText && !window.confirm(confirmText)) {
      return;
    }
    var body = {};
    for (var i = 0; i < form.elements.length; i += 1) {
      var field = form.elements[i];
      if (!field.name) {
        continue;
      }
      var value = field.type === "checkbox" ? field.checked : field.value;
      if (value === "" && field.hasAttribute("data-omit-empty")) {
        continue;
      }
      if (field.getAttribute("data-type") === "json") {
        try {
          value = JSON.parse(value || "{}");
        } catch (error) {
          show(form, field.labels && field.labels[0] ? field.labels[0].textContent + ": not valid JSON" : "not valid JSON");
          return;
        }
      }
      setPath(body, field.name, value);
    }
    var headers = { "Accept": "application/json", "X-CSRF-Token": csrf };
    var init = { method: method, headers: headers };
    if (method === "POST" || method === "PATCH") {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    var buttons = Array.prototype.filter.call(form.querySelectorAll("button"), function (button) {
      return !button.disabled;
    });
    buttons.forEach(function (button) { button.disabled = true; });
    try {
      var response = await request(url, init);
      if (!response) {
        return;
      }
      var payload = null;
      try { payload = await response.json(); } catch (error) { payload = null; }
      if (!response.ok) {
        show(form, refusal(payload, response.status));
        return;
      }
      var reveal = form.getAttribute("data-reveal");
      var next = form.getAttribute("data-next");
      if (reveal) {
        // a value the API answers once (a new API key): shown in the form, never stored
        show(form, payload && payload.data ? String(payload.data[reveal]) : "");
      } else if (next) {
        window.location.assign(fill(next, payload ? payload.data : null));
      } else {
        window.location.reload();
      }
    } finally {
      buttons.forEach(function (button) { button.disabled = false; });
    }
  }

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-api]");
    if (!form) {
      return;
    }
    event.preventDefault();
    submit(form);
  });

  async function refresh(element) {
    var response = await request(element.getAttribute("data-live"), {
      headers: { "Accept": "application/json" }
    });
    if (!response || !response.ok) {
      return;
    }
    var payload = await response.json();
    var data = payload.data;
    var items = Array.isArray(data) ? data : [data];
    items.forEach(function (item) {
      var scope = Array.isArray(data)
        ? element.querySelector('[data-id="' + String(item.id).replace(/"/g, "") + '"]')
        : element;
      if (!scope) {
        return;
      }
      scope.querySelectorAll("[data-field]").forEach(function (cell) {
        var value = pick(item, cell.getAttribute("data-field"));
        cell.textContent = value === null || value === undefined ? "—" : String(value);
      });
    });
  }

  // the runtime's last lines (text/plain, credentials already redacted by the API); a
  // refusal shows the problem's detail instead
  async function showLogs(button) {
    var into = document.getElementById(button.getAttribute("data-logs-into"));
    var message = document.getElementById(button.getAttribute("data-logs-into") + "-message");
    button.disabled = true;
    try {
      var response = await request(button.getAttribute("data-logs"), {
        headers: { "Accept": "text/plain, application/problem+json" }
      });
      if (!response) {
        return;
      }
      if (!response.ok) {
        var problem = null;
        try { problem = await response.json(); } catch (error) { problem = null; }
        message.textContent = refusal(problem, response.status);
        message.hidden = false;
        into.hidden = true;
        return;
      }
      into.textContent = await response.text();
      into.hidden = false;
      message.hidden = true;
    } finally {
      button.disabled = false;
    }
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("button[data-logs]");
    if (button && !button.disabled) {
      showLogs(button);
    }
  });

  document.querySelectorAll("[data-live]").forEach(function (element) {
    var every = Number(element.getAttribute("data-interval") || 1000);
    refresh(element);
    window.setInterval(function () { refresh(element); }, every);
  });
})();
