# One droplet per node. The image (a snapshot) must hold the media server and the Switchyard node
# agent as the systemd unit `switchyard-agent`, which reads /etc/switchyard/agent.env (an
# EnvironmentFile that cloud-init writes from the user data, cloud-config.tftpl). The provider is
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
  description = "The snapshot id or image slug with the media server and the node agent."
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
  })

  lifecycle {
    ignore_changes = [user_data, image]
  }
}

output "nodes" {
  value = { for id, d in digitalocean_droplet.node : id => { public = d.ipv4_address, private = d.ipv4_address_private } }
}
