# One droplet per node. Its user data (cloud-config.tftpl) installs what the node needs on a plain
# image (debian-13-x64, whose Node.js is 20.19): nginx with its RTMP module, ffmpeg, Node.js, the
# node agent from agent_package_url, and the agent's systemd unit (config/systemd/), which reads
# /etc/switchyard/agent.env, written by cloud-init from base64. The provider is
# configured once per Switchyard region with no arguments (its token comes from DIGITALOCEAN_TOKEN,
# which the operator lists in terraform.env); the droplet's region slug comes from regionVariables.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    digitalocean = {
      source  = "digitalocean/digitalocean"
      version = ">= 2.30"
    }
  }
}

variable "nodes" {
  type = map(object({ role = string, region = string }))
}

variable "tokens" {
  type      = map(string)
  sensitive = true
}

variable "service_url" {
  type = string
  # A line of the agent's environment file (systemd EnvironmentFile): no spaces, quotes, $ or \.
  validation {
    condition     = can(regex("^https?://[A-Za-z0-9._~:/?#@!&()*+,;=%\\[\\]-]+$", var.service_url))
    error_message = "The service URL must be an http:// or https:// URL without spaces, quotes, $ or backslashes."
  }
}

variable "group" {
  type = string
}

variable "region" {
  type = string
}

variable "region_slug" {
  type        = string
  description = "The DigitalOcean region of this Switchyard region, e.g. nyc3 or fra1."
}

variable "image" {
  type        = string
  description = "The image slug or snapshot id: debian-13-x64 (the user data installs the rest), or a snapshot that already holds it."
}

variable "sizes" {
  type = map(string)
  default = {
    origin     = "c-2"
    edge       = "c-2"
    relay      = "c-2"
    transcoder = "c-4"
  }
}

variable "vpc_uuid" {
  type    = string
  default = null
}

variable "ssh_keys" {
  type    = list(string)
  default = []
}

variable "scope" {
  type    = string
  default = "live"
  # A line of the agent's environment file: a name, as a node group's scope is.
  validation {
    condition     = can(regex("^[A-Za-z0-9._-]{1,64}$", var.scope))
    error_message = "The scope must be 1 to 64 letters, digits, '.', '_' or '-'."
  }
}

variable "agent_package_url" {
  type        = string
  default     = null
  description = "Where each node installs the Switchyard node agent from with npm: the tarball `npm pack` makes, served over https, or a release URL. null: the image already has /usr/local/bin/switchyard-agent."
  # One argument of npm install, and never anything but an https URL (no file:, git: or registry names).
  validation {
    condition     = var.agent_package_url == null || can(regex("^https://[A-Za-z0-9._~:/?#@!&()*+,;=%\\[\\]-]+$", var.agent_package_url))
    error_message = "The agent package URL must be an https:// URL without spaces, quotes, $ or backslashes."
  }
}

resource "digitalocean_droplet" "node" {
  for_each = var.nodes

  name     = "switchyard-${each.key}"
  image    = var.image
  region   = var.region_slug
  size     = var.sizes[each.value.role]
  vpc_uuid = var.vpc_uuid
  ssh_keys = var.ssh_keys
  tags     = ["switchyard", "switchyard-${var.group}", "switchyard-${each.value.role}"]

  # cloud-init writes the agent's environment file from base64 (write_files) and starts the unit
  # with an argument list (runcmd): no value is ever shell text on the node.
  user_data = templatefile("${path.module}/cloud-config.tftpl", {
    environment = {
      SWITCHYARD_URL        = var.service_url
      SWITCHYARD_NODE_ID    = each.key
      SWITCHYARD_NODE_TOKEN = var.tokens[each.key]
      SWITCHYARD_NODE_ROLE  = each.value.role
      SWITCHYARD_NODE_SCOPE = var.scope
    }
    agent_package = var.agent_package_url
    agent_unit    = file("${path.module}/switchyard-agent.service")
  })

  lifecycle {
    ignore_changes = [user_data, image]
  }
}

output "nodes" {
  value = { for id, d in digitalocean_droplet.node : id => { public = d.ipv4_address, private = d.ipv4_address_private } }
}
