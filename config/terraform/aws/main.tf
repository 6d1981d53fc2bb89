# One EC2 instance per node. Its user data (cloud-config.tftpl) installs what the node needs on a
# plain image (Debian 13, whose Node.js is 20.19): nginx with its RTMP module, ffmpeg, Node.js, the
# node agent from agent_package_url, and the agent's systemd unit (config/systemd/), which reads
# /etc/switchyard/agent.env, written by cloud-init from base64.

terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0"
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

variable "image_id" {
  type        = string
  description = "The AMI in this region: Debian 13 (the user data installs the rest), or an image that already holds it."
}

variable "instance_types" {
  type = map(string)
  default = {
    origin     = "c6i.large"
    edge       = "c6i.large"
    relay      = "c6i.large"
    transcoder = "c6i.2xlarge"
  }
}

variable "subnet_ids" {
  type        = list(string)
  description = "Subnets to spread nodes over (by node id), with a route to the internet."
}

variable "security_group_ids" {
  type        = list(string)
  description = "Groups that open the media ports (RTMP 1935, WebRTC/WSS 443, …) and reach service_url."
}

variable "key_name" {
  type    = string
  default = null
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

variable "tags" {
  type    = map(string)
  default = {}
}

resource "aws_instance" "node" {
  for_each = var.nodes

  ami                    = var.image_id
  instance_type          = var.instance_types[each.value.role]
  subnet_id              = var.subnet_ids[parseint(substr(sha1(each.key), 0, 4), 16) % length(var.subnet_ids)]
  vpc_security_group_ids = var.security_group_ids
  key_name               = var.key_name

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

  metadata_options {
    http_tokens = "required"
  }

  tags = merge(var.tags, {
    Name                = "switchyard-${each.key}"
    "switchyard:group"  = var.group
    "switchyard:region" = var.region
    "switchyard:node"   = each.key
    "switchyard:role"   = each.value.role
  })

  lifecycle {
    # The bootstrap token is renewed by the agent's heartbeats, and a new image is for new nodes:
    # neither may replace a running node.
    ignore_changes = [user_data, ami]
  }
}

output "nodes" {
  value = { for id, i in aws_instance.node : id => { public = i.public_ip, private = i.private_ip } }
}
